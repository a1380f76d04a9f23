//! The file sink: pages stream to per-slot files while recording; `finish` assembles trace.dat.
//!
//! ```text
//!   recording to OUT                               finish() / recover
//!   OUT.parts/lock            (flock'ed, our pid)      │
//!   OUT.parts/session.json    (page size, anchors)     │
//!   OUT.parts/losses.json     (pages the disk refused) ├──▶ OUT.parts/assembly-0.dat ──rename──▶ OUT
//!   OUT.parts/slot-001.pages  (slot 1's pages)         │    (+ assembly-0.journal: which slots
//!   OUT.parts/slot-002.pages                           │     it holds, at which offsets)
//! ```
//!
//! Like trace-cmd, which records one file per CPU and assembles them at the end, the sink appends
//! every page to its slot's file and hands the bytes to the OS after every flush cycle, so a
//! process killed with SIGKILL leaves every flushed page on disk. [`recover`] turns such a
//! leftover directory into a valid trace.dat (thread names and totals are rebuilt from the pages'
//! ThreadInfo records and missed counts).
//!
//! Finishing copies one slot at a time into `assembly-N.dat` inside the parts directory, makes
//! the copy durable, notes it in `assembly-N.journal`, and only then deletes the slot's part
//! file: it needs no more free space than the largest slot, and at every moment each page is in
//! a part file or in a journaled assembly, where [`recover`] finds it. The assembly is renamed
//! onto OUT last; a journal whose assembly is gone therefore means OUT is complete, and
//! [`recover`] then only removes the leftovers instead of overwriting it.
//!
//! Every file made here is created with `O_EXCL | O_NOFOLLOW` (nothing pre-planted is ever
//! written through), and [`recover`] reads only regular files, opened without following links
//! or blocking on FIFOs, a page at a time.

use crate::flush::page::PageRecords;
use crate::sink::tracedat::{write_tracedat_with, FileMeta, SlotMeta, SlotPages};
use crate::sink::{SessionSummary, Sink};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The directory next to `out` where pages stream while recording.
///
/// ```
/// let d = typhon_recorder::sink::parts_dir(std::path::Path::new("/tmp/run.dat"));
/// assert_eq!(d, std::path::PathBuf::from("/tmp/run.dat.parts"));
/// ```
pub fn parts_dir(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".parts");
    PathBuf::from(s)
}

const LOCK: &str = "lock";
const SESSION: &str = "session.json";
const LOSSES: &str = "losses.json";
/// `losses.json` is written once at its full size when the recording starts and later only
/// overwritten in place, so it can still be updated when the disk is full.
const LOSSES_LEN: usize = 4096;

fn slot_file(dir: &Path, slot: u8) -> PathBuf {
    dir.join(format!("slot-{slot:03}.pages"))
}

fn assembly_files(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("assembly-{n}.dat")),
        dir.join(format!("assembly-{n}.journal")),
    )
}

/// What a name in a parts directory is, if it is one this module makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Known {
    Lock,
    Session,
    Losses,
    Slot(u8),
    AssemblyDat(u32),
    AssemblyJournal(u32),
}

fn known(name: &str) -> Option<Known> {
    fn num(s: &str) -> Option<&str> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
    }
    Some(match name {
        LOCK => Known::Lock,
        SESSION => Known::Session,
        LOSSES => Known::Losses,
        _ => {
            if let Some(n) = name
                .strip_prefix("slot-")
                .and_then(|r| r.strip_suffix(".pages"))
            {
                if n.len() != 3 {
                    return None;
                }
                Known::Slot(num(n)?.parse().ok()?)
            } else if let Some(n) = name
                .strip_prefix("assembly-")
                .and_then(|r| r.strip_suffix(".dat"))
            {
                Known::AssemblyDat(num(n)?.parse().ok()?)
            } else if let Some(n) = name
                .strip_prefix("assembly-")
                .and_then(|r| r.strip_suffix(".journal"))
            {
                Known::AssemblyJournal(num(n)?.parse().ok()?)
            } else {
                return None;
            }
        }
    })
}

fn at(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// "a directory", "a FIFO", ...: what a path that should be a regular file is instead.
fn kind(t: &fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Creates `path`, which must not exist: never an existing file, never through a symlink.
fn create_new(path: &Path) -> io::Result<File> {
    create_new_with(path, false)
}

/// [`create_new`], appending: after a partial page is cut off, the next write goes to the new end.
fn create_new_with(path: &Path, append: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .append(append)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| at(path, "creating", e))
}

/// Opens an existing regular file: a symlink is not followed, and anything else (a FIFO, a
/// device, a directory) is refused without blocking or reading it.
fn open_regular(path: &Path, write: bool) -> io::Result<File> {
    let not_regular = |t: &fs::FileType| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {}, not a regular file", path.display(), kind(t)),
        )
    };
    // lstat first, so a device node is never even opened; fstat after, against a swap.
    let m = fs::symlink_metadata(path).map_err(|e| at(path, "reading", e))?;
    if !m.file_type().is_file() {
        return Err(not_regular(&m.file_type()));
    }
    let f = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| at(path, "opening", e))?;
    let m = f.metadata().map_err(|e| at(path, "reading", e))?;
    if !m.file_type().is_file() {
        return Err(not_regular(&m.file_type()));
    }
    Ok(f)
}

/// Reads a small regular file whole, refusing one larger than `cap` bytes.
fn read_small(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let f = open_regular(path, false)?;
    let mut v = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut v)
        .map_err(|e| at(path, "reading", e))?;
    if v.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {cap} bytes", path.display()),
        ));
    }
    Ok(v)
}

/// Checks that `dir` is a directory, naming the first path component that is not one.
fn check_dir(dir: &Path) -> io::Result<()> {
    let not_dir = |p: &Path| {
        io::Error::new(
            io::Error::from_raw_os_error(libc::ENOTDIR).kind(),
            format!("{} is not a directory", p.display()),
        )
    };
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(not_dir(dir)),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            let mut ancestors: Vec<&Path> = dir.ancestors().collect();
            ancestors.reverse();
            for a in ancestors {
                if fs::metadata(a).is_ok_and(|m| !m.is_dir()) {
                    return Err(not_dir(a));
                }
            }
            Err(at(dir, "checking directory", e))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("directory {} does not exist", dir.display()),
        )),
        Err(e) => Err(at(dir, "checking directory", e)),
    }
}

/// `path` against the working directory now, if it is relative.
fn absolute(path: &Path) -> io::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir()
        .map_err(|e| at(path, "resolving (the working directory is unusable)", e))?;
    Ok(cwd.join(path))
}

/// Checks an output path and makes it absolute against the working directory now, so a later
/// `chdir` (a daemon's `chdir("/")`) changes nothing. The output must be absent or a regular
/// file, in a directory that exists; errors name the path and what is wrong with it.
///
/// ```
/// use typhon_recorder::sink::output_path;
/// assert!(output_path("".as_ref()).is_err());
/// let e = output_path("/dev/null".as_ref()).unwrap_err().to_string();
/// assert!(e.contains("/dev/null is a character device"), "{e}");
/// let e = output_path("/etc/passwd/x.dat".as_ref()).unwrap_err().to_string();
/// assert!(e.contains("/etc/passwd is not a directory"), "{e}");
/// assert!(output_path("x.dat".as_ref()).unwrap().is_absolute());
/// ```
pub fn output_path(out: &Path) -> io::Result<PathBuf> {
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    if out.as_os_str().is_empty() {
        return Err(invalid("the output path is empty".into()));
    }
    let abs = absolute(out)?;
    let (Some(parent), Some(_)) = (abs.parent(), abs.file_name()) else {
        return Err(invalid(format!(
            "output {} names no file; give a file path",
            out.display()
        )));
    };
    if abs.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(invalid(format!(
            "output {} ends with '/'; give a file path",
            out.display()
        )));
    }
    match fs::symlink_metadata(&abs) {
        Ok(m) if m.file_type().is_file() => {}
        Ok(m) => {
            return Err(invalid(format!(
                "output {} is {}; give the path of a regular file (or of none)",
                abs.display(),
                kind(&m.file_type())
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        // A component of the parent is not a directory: `check_dir` names it.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {}
        Err(e) => return Err(at(&abs, "output", e)),
    }
    check_dir(parent)
        .map_err(|e| io::Error::new(e.kind(), format!("output {}: {e}", abs.display())))?;
    Ok(abs)
}

/// Takes the exclusive `flock` of a lock file, without waiting.
fn try_flock(f: &File) -> io::Result<bool> {
    // SAFETY: flock(2) on a descriptor this `File` owns and keeps open for the call.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn holder(f: &File) -> String {
    let mut buf = [0u8; 32];
    let n = f.read_at(&mut buf, 0).unwrap_or(0);
    match std::str::from_utf8(&buf[..n]).ok().map(str::trim) {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.to_owned(),
        _ => "unknown".into(),
    }
}

fn live_error(dir: &Path, pid: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "{}: a live recording, pid {pid}, is writing it; it is left untouched",
            dir.display()
        ),
    )
}

/// Creates the lock file of a fresh parts directory and takes its lock.
fn create_lock(dir: &Path) -> io::Result<File> {
    let path = dir.join(LOCK);
    let mut f = create_new(&path)?;
    if !try_flock(&f).map_err(|e| at(&path, "locking", e))? {
        return Err(live_error(dir, &holder(&f)));
    }
    writeln!(f, "{}", std::process::id()).map_err(|e| at(&path, "writing", e))?;
    Ok(f)
}

/// Takes the lock of an existing parts directory (creating the lock file if it has none),
/// refusing one a live process holds.
fn take_lock(dir: &Path) -> io::Result<File> {
    let path = dir.join(LOCK);
    let f = match open_regular(&path, true) {
        Ok(f) => f,
        Err(_) if fs::symlink_metadata(&path).is_err() => create_new(&path)?,
        Err(e) => return Err(e),
    };
    if !try_flock(&f).map_err(|e| at(&path, "locking", e))? {
        return Err(live_error(dir, &holder(&f)));
    }
    f.set_len(0).map_err(|e| at(&path, "writing", e))?;
    f.write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0)
        .map_err(|e| at(&path, "writing", e))?;
    Ok(f)
}

/// Why a recording to `out` cannot start while `dir` exists: a live recording owns it, or an
/// unfinished one left it (then, and only then, `recover` is the way forward).
fn refuse_existing(dir: &Path, out: &Path) -> io::Error {
    let busy = |m: String| io::Error::new(io::ErrorKind::AlreadyExists, m);
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            return busy(format!(
                "{} is {} in the way of the recording's parts directory; remove it or choose another output",
                dir.display(),
                kind(&m.file_type())
            ))
        }
        Err(e) => return at(dir, "creating", e),
    }
    let path = dir.join(LOCK);
    if let Ok(f) = open_regular(&path, false) {
        // SAFETY: flock(2) on a descriptor this `File` owns and keeps open for the call.
        let free = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
        if !free {
            return busy(format!(
                "cannot record to {}: {}: a live recording, pid {}, is writing it; choose another output",
                out.display(),
                dir.display(),
                holder(&f)
            ));
        }
    }
    busy(format!(
        "{} exists: an earlier recording to {} was not finished; run `typhon-rec recover {}` or remove it",
        dir.display(),
        out.display(),
        out.display()
    ))
}

/// Streams pages to `<out>.parts/` and assembles `out` at the end.
///
/// ```
/// use typhon_recorder::sink::FileSink;
/// use typhon_recorder::sink::{Sink, SessionSummary};
/// let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let out = dir.join("t.dat");
/// let mut s = FileSink::create(&out, 4096).unwrap();
/// s.finish(&SessionSummary { page_size: 4096, ..Default::default() }).unwrap();
/// assert!(out.exists());
/// assert!(!typhon_recorder::sink::parts_dir(&out).exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct FileSink {
    out: PathBuf,
    dir: PathBuf,
    page_size: usize,
    files: Vec<Option<SlotFile>>,
    /// Held (flock'ed) for the sink's whole life: the directory belongs to a live recording.
    lock: Option<File>,
    losses: File,
    pages_lost: u64,
    sink_errors: u64,
    first_error: Option<String>,
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
    /// Creates `<out>.parts/` and its lock (held until the sink is finished or dropped), after
    /// checking `out` with [`output_path`]: an output that is not absent or a regular file, or
    /// whose directory does not exist, is refused before anything is created. A parts
    /// directory that exists is refused too: a live recording is writing it, or it holds an
    /// unfinished one (the error says which; only the latter can be recovered).
    ///
    /// ```
    /// use typhon_recorder::sink::FileSink;
    /// let e = FileSink::create("/nonexistent-dir/x.dat", 4096).err().unwrap();
    /// assert!(e.to_string().contains("/nonexistent-dir"));
    /// let e = FileSink::create(std::env::temp_dir(), 4096).err().unwrap();
    /// assert!(e.to_string().contains("is a directory"));
    /// ```
    pub fn create(out: impl AsRef<Path>, page_size: usize) -> io::Result<Self> {
        let out = output_path(out.as_ref())?;
        let dir = parts_dir(&out);
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(refuse_existing(&dir, &out))
            }
            Err(e) => return Err(at(&dir, "creating", e)),
        }
        let mut made = Vec::new();
        let r = (|| {
            let lock = create_lock(&dir)?;
            made.push(LOCK);
            let session = dir.join(SESSION);
            let mut f = create_new(&session)?;
            made.push(SESSION);
            f.write_all(
                serde_json::json!({ "page_size": page_size })
                    .to_string()
                    .as_bytes(),
            )
            .map_err(|e| at(&session, "writing", e))?;
            let lpath = dir.join(LOSSES);
            let mut losses = create_new(&lpath)?;
            made.push(LOSSES);
            losses
                .write_all(&losses_bytes(0, 0, None))
                .map_err(|e| at(&lpath, "writing", e))?;
            Ok::<_, io::Error>((lock, losses))
        })();
        let (lock, losses) = match r {
            Ok(v) => v,
            Err(e) => {
                // Only the files this call made (a `recover` racing with it may own the lock).
                for f in made {
                    let _ = fs::remove_file(dir.join(f));
                }
                let _ = fs::remove_dir(&dir);
                return Err(e);
            }
        };
        Ok(Self {
            out,
            dir,
            page_size,
            files: (0..256).map(|_| None).collect(),
            lock: Some(lock),
            losses,
            pages_lost: 0,
            sink_errors: 0,
            first_error: None,
        })
    }

    /// Counts a failed page or flush, and notes it in `losses.json` (overwritten in place, so
    /// it works on a full disk) for `recover` to count after a kill.
    fn note_error(&mut self, pages: u64, e: &io::Error) {
        self.pages_lost += pages;
        self.sink_errors += 1;
        self.first_error.get_or_insert_with(|| e.to_string());
        let b = losses_bytes(
            self.pages_lost,
            self.sink_errors,
            self.first_error.as_deref(),
        );
        let _ = self.losses.write_all_at(&b, 0);
    }

    fn open_slot(&mut self, slot: u8) -> io::Result<&mut SlotFile> {
        let entry = &mut self.files[slot as usize];
        Ok(match entry {
            Some(f) => f,
            None => {
                let file = create_new_with(&slot_file(&self.dir, slot), true)?;
                entry.insert(SlotFile {
                    w: BufWriter::with_capacity(SLOT_BUFFER, file),
                    accepted: 0,
                    cut_to: None,
                })
            }
        })
    }

    fn assemble_all(&mut self, summary: &SessionSummary) -> io::Result<()> {
        let page = self.page_size as u64;
        if let Err(e) = self.flush() {
            // What the disk would not take is lost (and noted for `recover`).
            let unwritten: u64 = self
                .files
                .iter()
                .flatten()
                .map(|f| (f.w.buffer().len() as u64).div_ceil(page))
                .sum();
            self.note_error(unwritten, &e);
            return Err(io::Error::new(
                e.kind(),
                format!("writing the last pages: {e} ({unwritten} pages could not be written and are lost)"),
            ));
        }
        let mut sources = Vec::new();
        for (slot, f) in self.files.iter_mut().enumerate() {
            let Some(f) = f.take() else { continue };
            let file = f.w.into_inner().map_err(|e| e.into_error())?;
            sources.push(Source {
                slot: slot as u8,
                path: slot_file(&self.dir, slot as u8),
                file,
                offset: 0,
                len: f.accepted / page * page,
                remove: true,
            });
        }
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
        // The flusher's counts, or the sink's own when it is driven directly.
        let pages_lost = summary.pages_lost.max(self.pages_lost);
        let sink_errors = summary.sink_errors.max(self.sink_errors);
        let first = summary
            .first_sink_error
            .clone()
            .or(self.first_error.clone());
        meta.session = serde_json::json!({
            "end_ns": summary.end_ns,
            "no_slot": summary.no_slot,
            "filtered_no_slot": summary.filtered_no_slot,
            "pages_lost": pages_lost,
            "sink_errors": sink_errors,
            "first_sink_error": first,
            "slots": summary.slots.iter().map(|s| serde_json::json!({
                "slot": s.slot, "filtered": s.filtered, "refused": s.refused,
                "sink_lost": s.sink_lost, "clamped": s.clamped, "unclosed": s.unclosed, "thread_ids": s.thread_ids, "threads": s.threads,
            })).collect::<Vec<_>>(),
        });
        let a = assemble(&self.dir, &self.out, &meta, sources, true)?;
        // Unlocked and removed last: until here the directory is this recording's.
        let left = cleanup(&self.dir, &a.journal, &BTreeSet::new(), &mut self.lock);
        if !left.is_empty() {
            eprintln!(
                "typhon-recorder: {} is complete; left in {}: {}",
                self.out.display(),
                self.dir.display(),
                names(&left)
            );
        }
        Ok(())
    }
}

fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn losses_bytes(pages_lost: u64, sink_errors: u64, first: Option<&str>) -> Vec<u8> {
    let first: Option<String> = first.map(|s| s.chars().take(1000).collect());
    let j = serde_json::json!({
        "pages_lost": pages_lost, "sink_errors": sink_errors, "first_sink_error": first,
    })
    .to_string();
    let mut b = vec![b' '; LOSSES_LEN];
    b[..j.len()].copy_from_slice(j.as_bytes());
    b[LOSSES_LEN - 1] = b'\n';
    b
}

impl Sink for FileSink {
    fn begin(&mut self, start: &SessionSummary) -> io::Result<()> {
        let meta = serde_json::json!({
            "page_size": self.page_size,
            "wall_anchor_ns": start.wall_anchor_ns,
            "monotonic_anchor_ns": start.monotonic_anchor_ns,
            "version": start.version,
        });
        let path = self.dir.join(SESSION);
        let f = open_regular(&path, true)?;
        f.set_len(0).map_err(|e| at(&path, "writing", e))?;
        f.write_all_at(meta.to_string().as_bytes(), 0)
            .map_err(|e| at(&path, "writing", e))
    }

    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()> {
        let r = self.open_slot(slot).and_then(|f| f.write_page(page));
        if let Err(e) = &r {
            self.note_error(1, e);
        }
        r
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

    /// Assembles `out`. On an error (a full disk) every page that reached the disk is kept in
    /// `<out>.parts/`, which is unlocked when the sink is dropped: the error names both paths
    /// and says to run `typhon-rec recover`.
    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()> {
        self.assemble_all(summary).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "finishing {}: {e}; every page that reached the disk is kept in {}: free some space, then run `typhon-rec recover {}`",
                    self.out.display(),
                    self.dir.display(),
                    self.out.display()
                ),
            )
        })
    }
}

/// A kill at any step of assembling or cleaning up, for tests: when the environment variable
/// `TYPHON_FAILPOINT_FINISH` is `k`, the process aborts (as SIGKILL would stop it: no clean-up)
/// at the k-th step. Steps are counted from the start of the process.
fn failpoint() {
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
struct Source {
    slot: u8,
    path: PathBuf,
    file: File,
    offset: u64,
    len: u64,
    /// Delete `path` once its pages are durable in the new assembly (a part file).
    remove: bool,
}

/// A page that could not be read: (slot, page index in the slot, error).
type Unreadable = (u8, u64, String);

/// Reads a source page by page. Strict: a read error fails the copy. Otherwise the page is
/// written as zeros (an empty page) and the error noted, so the rest is still copied.
struct PageSource {
    /// Closed once the pages are read: a deleted part file frees its space only when closed.
    file: Option<File>,
    path: PathBuf,
    slot: u8,
    offset: u64,
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
        let page_end = ((self.pos / self.page + 1) * self.page).min(self.len);
        let n = buf.len().min((page_end - self.pos) as usize);
        let e = loop {
            match file.read_at(&mut buf[..n], self.offset + self.pos) {
                Ok(0) => {
                    break io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("ends before byte {}", self.offset + self.len),
                    )
                }
                Ok(k) => {
                    self.pos += k as u64;
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
struct Assembled {
    journal: PathBuf,
    unreadable: Vec<Unreadable>,
    /// Part files kept because a page of theirs could not be read.
    kept: BTreeSet<PathBuf>,
}

/// Writes `out` from `sources` through a new `assembly-N.dat` in `dir` (see the module docs):
/// each slot's pages are copied, synced and journaled before its part file is deleted; the
/// assembly is renamed onto `out` last.
fn assemble(
    dir: &Path,
    out: &Path,
    meta: &FileMeta,
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
            let src = PageSource {
                file: Some(s.file),
                path: s.path,
                slot,
                offset: s.offset,
                len,
                pos: 0,
                page,
                strict,
                bad: bad.clone(),
            };
            SlotPages::new(slot, len, src)
        })
        .collect();
    let mut kept = BTreeSet::new();
    let mut w = BufWriter::new(file);
    write_tracedat_with(&mut w, meta, &mut slots, |w, slot, offset, len| {
        w.flush()?;
        w.get_ref()
            .sync_data()
            .map_err(|e| at(&dat, "syncing", e))?;
        failpoint();
        writeln!(jf, "slot {slot} {offset} {len}").map_err(|e| at(&journal, "writing", e))?;
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
    })
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

/// Removes the files this module makes from `dir` (never `keep`, nor anything it did not make:
/// those are returned), then, if nothing is left, `last` (the journal that says `out` is
/// complete), the lock and the directory. Returns what was left.
fn cleanup(
    dir: &Path,
    last: &Path,
    keep: &BTreeSet<PathBuf>,
    lock: &mut Option<File>,
) -> Vec<PathBuf> {
    let mut left = Vec::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let path = e.path();
            let name = e.file_name();
            let k = name.to_str().and_then(known);
            if path == last || k == Some(Known::Lock) {
                continue;
            }
            let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
            if k.is_none() || !regular || keep.contains(&path) || fs::remove_file(&path).is_err() {
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
    /// Pages that could not be read (an I/O error): written to the file as empty pages, their
    /// records lost; the part file is kept for another try. Each is in `errors`.
    pub unreadable_pages: u64,
    /// Pages the disk refused while recording (from the recording's `losses.json`).
    pub pages_lost: u64,
    /// Errors the sink met while recording.
    pub sink_errors: u64,
    /// The first of them, as text.
    pub first_sink_error: Option<String>,
    /// Every problem met reading the directory (each names its path): unreadable pages, files
    /// that are not regular. `typhon-rec recover` exits non-zero when there is one.
    pub errors: Vec<String>,
    /// What is left in the parts directory: files recover did not make (unknown names, links,
    /// FIFOs, directories) and part files it could not read whole. Never deleted.
    pub left: Vec<PathBuf>,
    /// `out` was already complete (the finish was killed after writing it, while removing the
    /// parts): it was not touched, only the leftovers were removed.
    pub already_complete: bool,
}

impl Recovered {
    /// Pages lost for any reason: refused by the disk while recording, damaged, unreadable.
    ///
    /// ```
    /// let r = typhon_recorder::sink::Recovered { damaged_pages: 1, pages_lost: 2, ..Default::default() };
    /// assert_eq!(r.lost_pages(), 3);
    /// ```
    pub fn lost_pages(&self) -> u64 {
        self.pages_lost + self.damaged_pages + self.unreadable_pages
    }
}

/// Counts and names a slot's pages, reading them one at a time.
struct Scan {
    meta: SlotMeta,
    pages: u64,
    damaged: u64,
}

fn scan(src: &Source, page: u64, bad: &mut Vec<Unreadable>) -> Scan {
    let mut sm = SlotMeta {
        slot: src.slot,
        ..Default::default()
    };
    let mut buf = vec![0u8; page as usize];
    let (mut pages, mut damaged) = (0, 0);
    for i in 0..src.len / page {
        pages += 1;
        if let Err(e) = src.file.read_exact_at(&mut buf, src.offset + i * page) {
            bad.push((src.slot, i, at(&src.path, "reading", e).to_string()));
            continue;
        }
        let Ok(mut records) = PageRecords::new(&buf) else {
            damaged += 1;
            continue;
        };
        sm.missed += records.missed();
        for r in records.by_ref() {
            let Ok((_, data)) = r else {
                damaged += 1;
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
    sm.attempted = sm.written + sm.missed;
    Scan {
        meta: sm,
        pages,
        damaged,
    }
}

/// The slots an assembly's journal says it holds, checked against the assembly's length.
/// (slot, offset, len) of the pages an assembly holds.
type Journaled = Vec<(u8, u64, u64)>;

fn journaled(dat: &Path, journal: &Path, page: u64) -> io::Result<(File, Journaled)> {
    let text = read_small(journal, 64 * 1024)?;
    let f = open_regular(dat, false)?;
    let size = f.metadata().map_err(|e| at(dat, "reading", e))?.len();
    let mut v = Vec::new();
    // A line the kill cut short was not synced: its slot's part file is still there.
    for line in String::from_utf8_lossy(&text).lines() {
        let w: Vec<&str> = line.split(' ').collect();
        if let ["slot", s, o, l] = w[..] {
            if let (Ok(s), Ok(o), Ok(l)) = (s.parse::<u8>(), o.parse::<u64>(), l.parse::<u64>()) {
                if o % page == 0 && l % page == 0 && o.checked_add(l).is_some_and(|e| e <= size) {
                    v.push((s, o, l));
                }
            }
        }
    }
    Ok((f, v))
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
    // A journal whose assembly is gone: it was renamed onto `out`, which is complete.
    if let Some(&n) = journals
        .iter()
        .find(|n| !entries.contains_key(&Known::AssemblyDat(**n)))
    {
        if fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_file()) {
            for (k, p) in &entries {
                let holds_pages = matches!(k, Known::Slot(_))
                    && fs::symlink_metadata(p).is_ok_and(|m| m.len() > 0);
                if holds_pages {
                    keep.insert(p.clone());
                }
            }
            let (_, journal) = assembly_files(&dir, n);
            let left = cleanup(&dir, &journal, &keep, &mut lock);
            rec.left.extend(left);
            rec.left.sort();
            rec.left.dedup();
            rec.already_complete = true;
            return Ok(rec);
        }
        rec.errors.push(format!(
            "{} says {} was complete, but it is not a file: recovering what is left",
            entries[&Known::AssemblyJournal(n)].display(),
            out.display()
        ));
    }
    // Only the lock (or nothing) is left: a finish was killed at the very end of its clean-up.
    let holds_nothing = entries
        .keys()
        .all(|k| matches!(k, Known::Lock | Known::Losses));
    if holds_nothing
        && rec.left.is_empty()
        && fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_file())
    {
        rec.left = cleanup(&dir, &dir.join(LOCK), &keep, &mut lock);
        rec.already_complete = true;
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
    let page_size = session["page_size"].as_u64().unwrap_or(0);
    crate::flush::page::validate_page_size(page_size as usize).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", session_path.display()),
        )
    })?;
    let page = page_size;
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
    // Each slot's pages: its part file if it is still there, else a journaled assembly.
    let mut sources: BTreeMap<u8, Source> = BTreeMap::new();
    for (k, path) in &entries {
        let Known::Slot(slot) = *k else { continue };
        match open_regular(path, false).and_then(|f| {
            let len = f.metadata().map_err(|e| at(path, "reading", e))?.len();
            Ok((f, len))
        }) {
            Ok((file, len)) => {
                rec.torn_bytes += len % page;
                sources.insert(
                    slot,
                    Source {
                        slot,
                        path: path.clone(),
                        file,
                        offset: 0,
                        len: len / page * page,
                        remove: true,
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
        match journaled(&dat, &journal, page) {
            Ok((f, slots)) => {
                for (slot, offset, len) in slots {
                    if sources.get(&slot).is_some_and(|s| s.len > 0) {
                        continue;
                    }
                    let file = f.try_clone().map_err(|e| at(&dat, "opening", e))?;
                    sources.insert(
                        slot,
                        Source {
                            slot,
                            path: dat.clone(),
                            file,
                            offset,
                            len,
                            remove: false,
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
    let mut meta = FileMeta::new(page_size as u32);
    meta.wall_anchor_ns = session["wall_anchor_ns"].as_i64().unwrap_or(0);
    meta.mono_anchor_ns = session["monotonic_anchor_ns"].as_i64().unwrap_or(0);
    let mut bad = Vec::new();
    for src in sources.values() {
        let s = scan(src, page, &mut bad);
        rec.damaged_pages += s.damaged;
        rec.records += s.meta.written;
        rec.missed += s.meta.missed;
        rec.slots.push((src.slot, s.pages, s.meta.written));
        meta.slots.push(s.meta);
    }
    let mut unreadable: BTreeSet<(u8, u64)> = bad.iter().map(|b| (b.0, b.1)).collect();
    // A part file a page of which could not be read is kept, for another try.
    let unread_slots: BTreeSet<u8> = unreadable.iter().map(|b| b.0).collect();
    let srcs: Vec<Source> = sources
        .into_values()
        .map(|mut s| {
            if unread_slots.contains(&s.slot) {
                if s.remove {
                    keep.insert(s.path.clone());
                }
                s.remove = false;
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
        "unreadable_pages": unreadable_before,
        "pages_lost": rec.pages_lost,
        "sink_errors": rec.sink_errors,
        "first_sink_error": rec.first_sink_error,
    });
    let a = assemble(&dir, &out, &meta, srcs, false)?;
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

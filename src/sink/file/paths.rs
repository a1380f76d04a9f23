//! The paths of a recording: output checks, the parts directory's names, exclusive creates,
//! reads that never follow a link or block on a FIFO, and the lock.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

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

pub(super) const LOCK: &str = "lock";
pub(super) const SESSION: &str = "session.json";
pub(super) const LOSSES: &str = "losses.json";
/// `losses.json` is written once at its full size when the recording starts and later only
/// overwritten in place, so it can still be updated when the disk is full.
pub(super) const LOSSES_LEN: usize = 4096;

pub(super) fn slot_file(dir: &Path, slot: u8) -> PathBuf {
    dir.join(slot_name(slot))
}

/// A compressed recording's pages of chunk `index` of a slot, kept until that chunk is in the
/// slot's part file (`slot-001.chunk-7.pending`, see `chunks`).
pub(super) fn pending_file(dir: &Path, slot: u8, index: u64) -> PathBuf {
    dir.join(pending_name(slot, index))
}

/// A pending file starts with these 8 bytes, then the u64 (little-endian) index of the chunk
/// its pages will be (the one its name says), then whole pages.
pub(super) const PENDING_MAGIC: &[u8; 8] = b"typhpnd1";

/// The tombstone of chunk `index` of a slot, which the disk refused (`slot-001.chunk-7.lost`,
/// empty): its pages are counted lost (`losses.json`), and the name says the index was taken,
/// so `recover` counts the chunk neither missing nor twice. A name, not bytes: the pending file
/// is renamed to it, which a full disk allows.
pub(super) fn lost_file(dir: &Path, slot: u8, index: u64) -> PathBuf {
    dir.join(lost_name(slot, index))
}

/// Bytes before a pending file's pages.
pub(super) const PENDING_HEADER: u64 = 16;

pub(super) fn assembly_files(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("assembly-{n}.dat")),
        dir.join(format!("assembly-{n}.journal")),
    )
}

/// What a name in a parts directory is, if it is one this module makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Known {
    Lock,
    Session,
    Losses,
    Counters,
    Slot(u8),
    /// Slot, chunk index.
    Pending(u8, u64),
    /// Slot, chunk index.
    Lost(u8, u64),
    AssemblyDat(u32),
    AssemblyJournal(u32),
}

/// The recorder's counters while it runs (see `counters.rs`).
pub(super) const COUNTERS: &str = "counters";

/// The name's kind, if it is exactly a name this module makes: numbers are spelled as it
/// spells them (`slot-001.pages`, `assembly-1.dat`; never `assembly-01.dat`), so a file that
/// only looks like one of ours is never taken for one.
pub(super) fn known(name: &str) -> Option<Known> {
    let k = match name {
        LOCK => Known::Lock,
        SESSION => Known::Session,
        LOSSES => Known::Losses,
        COUNTERS => Known::Counters,
        _ => {
            let num = |s: &str| -> Option<u64> {
                (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| s.parse().ok())
                    .flatten()
            };
            if let Some(n) = name
                .strip_prefix("slot-")
                .and_then(|r| r.strip_suffix(".pages"))
            {
                Known::Slot(u8::try_from(num(n)?).ok()?)
            } else if let Some((n, i)) = name
                .strip_prefix("slot-")
                .and_then(|r| r.strip_suffix(".pending"))
                .and_then(|r| r.split_once(".chunk-"))
            {
                Known::Pending(u8::try_from(num(n)?).ok()?, num(i)?)
            } else if let Some((n, i)) = name
                .strip_prefix("slot-")
                .and_then(|r| r.strip_suffix(".lost"))
                .and_then(|r| r.split_once(".chunk-"))
            {
                Known::Lost(u8::try_from(num(n)?).ok()?, num(i)?)
            } else if let Some(n) = name
                .strip_prefix("assembly-")
                .and_then(|r| r.strip_suffix(".dat"))
            {
                Known::AssemblyDat(u32::try_from(num(n)?).ok()?)
            } else if let Some(n) = name
                .strip_prefix("assembly-")
                .and_then(|r| r.strip_suffix(".journal"))
            {
                Known::AssemblyJournal(u32::try_from(num(n)?).ok()?)
            } else {
                return None;
            }
        }
    };
    let canonical = match k {
        Known::Slot(s) => slot_name(s),
        Known::Pending(s, i) => pending_name(s, i),
        Known::Lost(s, i) => lost_name(s, i),
        Known::AssemblyDat(n) => format!("assembly-{n}.dat"),
        Known::AssemblyJournal(n) => format!("assembly-{n}.journal"),
        _ => return Some(k),
    };
    (canonical == name).then_some(k)
}

fn slot_name(slot: u8) -> String {
    format!("slot-{slot:03}.pages")
}

fn pending_name(slot: u8, index: u64) -> String {
    format!("slot-{slot:03}.chunk-{index}.pending")
}

fn lost_name(slot: u8, index: u64) -> String {
    format!("slot-{slot:03}.chunk-{index}.lost")
}

/// What an assembly's journal says: the slots the assembly holds (slot, offset, length), and,
/// once it is complete, the identity it had when it was renamed onto OUT (dev, inode, length).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Journal {
    pub(super) slots: Vec<(u8, u64, u64)>,
    pub(super) renamed: Option<(u64, u64, u64)>,
}

/// The journal line that notes a slot's pages in the assembly.
pub(super) fn journal_slot(slot: u8, offset: u64, len: u64) -> String {
    format!("slot {slot} {offset} {len}\n")
}

/// The journal line written (and synced) just before the rename onto OUT.
pub(super) fn journal_renamed(dev: u64, ino: u64, len: u64) -> String {
    format!("renamed {dev} {ino} {len}\n")
}

/// Parses a journal; `None` if the text is not one this module wrote (every line is a
/// `slot` or `renamed` line; only the last one may be cut short, by a kill, and it is not
/// used).
pub(super) fn parse_journal(text: &[u8]) -> Option<Journal> {
    let text = std::str::from_utf8(text).ok()?;
    let mut j = Journal::default();
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        let w: Vec<&str> = line.split(' ').collect();
        let nums = |v: &[&str]| -> Option<Vec<u64>> { v.iter().map(|s| s.parse().ok()).collect() };
        if last {
            // After the last newline: nothing, or the start of a line the kill cut short.
            let cut_short = ["slot ", "renamed "].iter().any(|p| {
                p.starts_with(line)
                    || line
                        .strip_prefix(p)
                        .is_some_and(|r| r.bytes().all(|b| b.is_ascii_digit() || b == b' '))
            });
            return cut_short.then_some(j);
        }
        match w[..] {
            ["slot", s, o, l] => {
                let v = nums(&[s, o, l])?;
                j.slots.push((u8::try_from(v[0]).ok()?, v[1], v[2]));
            }
            ["renamed", d, i, l] => {
                let v = nums(&[d, i, l])?;
                j.renamed = Some((v[0], v[1], v[2]));
            }
            _ => return None,
        }
    }
    Some(j)
}

/// Whether the regular file `path`, named as kind `k`, holds what this module writes there:
/// an assembly starts as a trace.dat does, a journal parses. Anything else is not deleted.
pub(super) fn looks_ours(k: Known, path: &Path) -> bool {
    match k {
        Known::AssemblyDat(_) => begins_as(path, crate::sink::tracedat::MAGIC),
        Known::AssemblyJournal(_) => {
            read_small(path, 64 * 1024).is_ok_and(|t| parse_journal(&t).is_some())
        }
        // Empty, or the header's start (a kill between the create and the header's write).
        Known::Pending(..) => begins_as(path, PENDING_MAGIC),
        // A renamed pending file: its pages were counted lost.
        Known::Lost(..) => begins_as(path, PENDING_MAGIC),
        _ => true,
    }
}

/// Whether the regular file `path` starts with `magic`, or with a part of it and ends there
/// (a kill while it was written).
fn begins_as(path: &Path, magic: &[u8]) -> bool {
    let Ok(f) = open_regular(path, false) else {
        return false;
    };
    let mut head = vec![0u8; magic.len()];
    let n = f
        .take(magic.len() as u64)
        .read(&mut head)
        .unwrap_or(usize::MAX);
    n <= magic.len() && head[..n] == magic[..n]
}

pub(super) fn at(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// "a directory", "a FIFO", ...: what a path that should be a regular file is instead.
pub(super) fn kind(t: &fs::FileType) -> &'static str {
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
pub(super) fn create_new(path: &Path) -> io::Result<File> {
    create_new_with(path, false)
}

/// [`create_new`], appending: after a partial page is cut off, the next write goes to the new end.
pub(super) fn create_new_with(path: &Path, append: bool) -> io::Result<File> {
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
pub(super) fn open_regular(path: &Path, write: bool) -> io::Result<File> {
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
pub(super) fn read_small(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
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
pub(super) fn check_dir(dir: &Path) -> io::Result<()> {
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
pub(super) fn absolute(path: &Path) -> io::Result<PathBuf> {
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

/// The lock of a parts directory: an exclusive `flock` of the directory itself, held as long
/// as this value lives, and for a recording also of its `lock` file.
///
/// The directory's lock is the one that counts: taking it writes nothing, so a file planted at
/// `OUT.parts/lock` (a hard link to someone's file) is never written through, and deleting
/// `lock` while a recording runs does not free its directory. The recorder also `flock`s the
/// `lock` file it created exclusively (the note of its pid), so that a tool that knows only
/// the usual convention (`flock -n OUT.parts/lock`) sees the recording as live too.
pub(super) struct DirLock {
    /// Only held: closing it releases the lock.
    _dir: File,
    /// The recorder's own pid note, locked beside the directory (`None` for `recover`).
    _note: Option<File>,
}

/// Opens `dir` itself (never through a symlink) for `flock`.
pub(super) fn open_dir(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| at(dir, "opening", e))
}

/// `flock(op | LOCK_NB)` on `f`: false if another process holds a conflicting lock.
pub(super) fn try_flock(f: &File, op: libc::c_int) -> io::Result<bool> {
    // SAFETY: flock(2) on a descriptor this `File` owns and keeps open for the call.
    if unsafe { libc::flock(f.as_raw_fd(), op | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// [`try_flock`], tried again for up to 250 ms while another process holds the lock: a child
/// the recording process spawned a moment before it ended holds a copy of the lock's
/// descriptor from its fork until its exec (close-on-exec closes it only then), so a
/// directory whose recorder just ended can look live for that moment. A live recording is
/// still refused, 250 ms later.
fn flock_patiently(f: &File, op: libc::c_int) -> io::Result<bool> {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(250);
    loop {
        if try_flock(f, op)? {
            return Ok(true);
        }
        if std::time::Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The pid the lock note of `dir` names: read only if it is a small regular file, never
/// written; "unknown" if it names none.
fn holder(dir: &Path) -> String {
    let text = read_small(&dir.join(LOCK), 32).unwrap_or_default();
    match std::str::from_utf8(&text).ok().map(str::trim) {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.to_owned(),
        _ => "unknown".into(),
    }
}

fn live_error(dir: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "{}: a live recording, pid {}, is writing it; it is left untouched",
            dir.display(),
            holder(dir)
        ),
    )
}

/// Takes the lock of the parts directory `dir`, refusing one a live process holds.
pub(super) fn take_lock(dir: &Path) -> io::Result<DirLock> {
    let f = open_dir(dir)?;
    if !flock_patiently(&f, libc::LOCK_EX).map_err(|e| at(dir, "locking", e))? {
        return Err(live_error(dir));
    }
    Ok(DirLock {
        _dir: f,
        _note: None,
    })
}

/// Takes the lock of a fresh parts directory and writes the pid note, created exclusively.
/// `made` gets the note's name as soon as it exists, so a start that fails later (a full disk
/// refusing the pid) removes it.
pub(super) fn create_lock(dir: &Path, made: &mut Vec<&'static str>) -> io::Result<DirLock> {
    let mut lock = take_lock(dir)?;
    let path = dir.join(LOCK);
    let mut f = create_new(&path)?;
    made.push(LOCK);
    writeln!(f, "{}", std::process::id()).map_err(|e| at(&path, "writing", e))?;
    // The file was created by us a moment ago and the directory's lock is held, so nobody
    // else can hold this one: a refusal here would be an error of the system, not a rival.
    if !try_flock(&f, libc::LOCK_EX).map_err(|e| at(&path, "locking", e))? {
        return Err(live_error(dir));
    }
    lock._note = Some(f);
    Ok(lock)
}

/// Why a recording to `out` cannot start while `dir` exists: a live recording owns it, or an
/// unfinished one left it (then, and only then, `recover` is the way forward).
pub(super) fn refuse_existing(dir: &Path, out: &Path) -> io::Error {
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
    if let Ok(f) = open_dir(dir) {
        if let Ok(false) = flock_patiently(&f, libc::LOCK_SH) {
            return busy(format!(
                "cannot record to {}: {}: a live recording, pid {}, is writing it; choose another output",
                out.display(),
                dir.display(),
                holder(dir)
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

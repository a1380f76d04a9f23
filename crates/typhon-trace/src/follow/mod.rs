//! Following a recording while it runs (SPEC §17): the reader behind `typhon-rec live`.
//!
//! A [`Follower`] opens `OUT` (a recording in progress: it reads `OUT.parts/`, then `OUT`
//! once the recording is finished) or a finished/recovered trace file. Each [`Follower::poll`]
//! reads what is new since the last call, whole pages only, each checked as `recover` checks
//! it, and says which [`RecordingState`] the recording is in.
//!
//! ```text
//!   OUT.parts/ lock held ──────────────▶ live        (slot-NNN.pages, pending files read)
//!   lock held, assembly-N.* there ─────▶ finishing   (the part files held open are read on)
//!   OUT.parts/ gone or unlocked, OUT new ▶ finished  (OUT read from each slot's next page)
//!   lock free, parts there, OUT not new ▶ killed     (message: run `typhon-rec recover OUT`)
//! ```
//!
//! A rotating recording (SPEC §16: `OUT.000001`, `OUT.000002`, … no OUT nor `OUT.parts`) is
//! followed segment by segment, the oldest kept first, each as a recording of its own: live
//! while any segment is written, finished with the last one, killed when a segment's parts
//! remain unlocked; segments its `keep` deleted before the follower read them are counted in
//! [`FollowBatch::skipped_segments`]. A segment deleted while the follower reads it is read to
//! its end from the part files the follower holds open (a deleted file stays readable while
//! open), so none of its records is skipped.
//!
//! The follower never takes the recording's lock for writing and never writes into the parts
//! directory: it cannot make the recording lose a record. A follower that falls behind skips
//! forward and counts what it skipped ([`FollowBatch::skipped_pages`],
//! [`FollowBatch::skipped_records`]), apart from the recording's own losses.

mod file;
pub use file::meta_losses;
mod gather;
mod parts;
mod segments;

use crate::tracedat::OwnedRecord;
use gather::Gather;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The state of the followed recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordingState {
    /// The recorder runs: the parts directory's lock is held.
    Live,
    /// The recorder is assembling OUT from its parts (OUT is not complete yet).
    Finishing,
    /// OUT is complete (or a finished/recovered file was opened).
    Finished,
    /// The lock is free and the parts remain: the recording was killed; `typhon-rec recover`
    /// turns its parts into a file.
    Killed,
}

impl RecordingState {
    /// The state's name: `"live"`, `"finishing"`, `"finished"` or `"killed"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RecordingState::Live => "live",
            RecordingState::Finishing => "finishing",
            RecordingState::Finished => "finished",
            RecordingState::Killed => "killed",
        }
    }
}

impl std::fmt::Display for RecordingState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one [`Follower::poll`] found.
#[derive(Clone, Debug)]
pub struct FollowBatch {
    /// The recording's state at this poll.
    pub state: RecordingState,
    /// New records in time order per slot (the batch merged by time), resolved like
    /// [`crate::tracedat::TraceFile::stream_records`] does, as [`OwnedRecord`]s. Their `at` is
    /// the file offset in OUT; from the parts, the offset in the slot's pages (page index ×
    /// page size + the offset in the page), which for an uncompressed part file is its offset
    /// there. A rotating recording's: in the segment [`Follower::segment`] names (or one before
    /// it, read in the same poll).
    pub records: Vec<OwnedRecord>,
    /// The recording's own losses so far (counter name -> value, non-zero and zero), read from
    /// the parts directory or the file's metadata.
    pub losses: BTreeMap<String, u64>,
    /// Thread names per slot as known so far (from ThreadInfo records / session metadata).
    pub threads: BTreeMap<u32, String>,
    /// Pages this follower skipped because it fell behind (not losses of the recording), in
    /// all polls so far.
    pub skipped_pages: u64,
    /// Records this follower skipped because it fell behind (not losses of the recording), in
    /// all polls so far.
    pub skipped_records: u64,
    /// Segments of a rotating recording that its `keep` deleted before this follower opened
    /// any of their files (their records are not known, so not counted in `skipped_records`),
    /// in all polls so far; `message` says so too. A segment deleted while it was read is
    /// read to its end from the part files held open, not counted here. Zero for a recording
    /// that does not rotate.
    pub skipped_segments: u64,
    /// A hint for the user, e.g. "killed: run `typhon-rec recover OUT`".
    pub message: Option<String>,
}

/// An error while following: names the path it concerns.
#[derive(Debug)]
pub struct FollowError {
    path: PathBuf,
    what: String,
}

impl FollowError {
    pub(crate) fn new(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        FollowError {
            path: path.into(),
            what: what.into(),
        }
    }

    /// An I/O error about `path` (its text names the path already when the core made it).
    pub(crate) fn io(path: &Path, e: std::io::Error) -> Self {
        let what = e.to_string();
        let p = path.display().to_string();
        match what.strip_prefix(&format!("{p}: ")) {
            Some(rest) => FollowError::new(path, rest),
            None => FollowError::new(path, what),
        }
    }

    /// The file or directory the error concerns.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Display for FollowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

impl std::error::Error for FollowError {}

/// Where the follower reads from now.
enum Mode {
    /// `OUT.parts/` of a recording in progress (or killed).
    Parts(parts::Parts),
    /// A finished (or recovered) trace file, read to its end once.
    File(Box<file::FileReader>),
}

/// What one recording (or one segment of a rotating one) showed at a poll.
enum Step {
    /// Its state, and a hint for the user.
    At(RecordingState, Option<String>),
    /// Its parts directory is gone and OUT is not a new file: the recording was removed (a
    /// segment: deleted by the recording's `keep`). `read`: a segment's part files held open
    /// were read to their ends first (the segment was read, not skipped).
    Removed(PathBuf, bool),
}

/// One recording: `OUT.parts/` while it runs, then OUT.
struct Single {
    out: PathBuf,
    /// OUT's (device, inode) when the follower opened it: a finish makes a new file.
    out_before: Option<(u64, u64)>,
    mode: Mode,
    /// A segment of a rotating recording (its removal is the recording's `keep`, not an error).
    segment: bool,
}

impl Single {
    /// The recording OUT (its parts dir, or its file). A `segment` of a rotating recording:
    /// a file OUT can only be the one its finish made (a rotating recording does not start
    /// where segments of an earlier one are).
    fn open(path: &Path, out: &Path, is_dir: bool, segment: bool) -> Result<Single, FollowError> {
        let dir = typhon_recorder::sink::parts_dir(out);
        // OUT's identity now, to tell the finished recording's OUT from an older file of that
        // name; none if OUT is already the finished one (a finish stopped in its clean-up).
        let out_before =
            identity(out).filter(|_| !segment && !typhon_recorder::sink::parts_complete(&dir, out));
        let mode = match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => Mode::Parts(parts::Parts::open(&dir)?),
            Ok(_) => {
                return Err(FollowError::new(
                    &dir,
                    "is not a directory: not a recording's parts",
                ))
            }
            Err(_) if is_dir => {
                return Err(FollowError::new(
                    path,
                    "is a directory, not a recording (give OUT or OUT.parts)",
                ))
            }
            Err(_) => match std::fs::symlink_metadata(out) {
                Ok(m) if m.file_type().is_file() => {
                    Mode::File(Box::new(file::FileReader::open(out, &BTreeMap::new())?))
                }
                Ok(_) => return Err(FollowError::new(out, "is not a regular file")),
                Err(e) => {
                    return Err(FollowError::new(
                        out,
                        format!(
                            "no recording here: neither it nor {} can be read ({e})",
                            dir.display()
                        ),
                    ))
                }
            },
        };
        Ok(Single {
            out: out.to_path_buf(),
            out_before,
            mode,
            segment,
        })
    }

    fn poll(&mut self, g: &mut Gather) -> Result<Step, FollowError> {
        let mut step = Step::At(RecordingState::Finished, None);
        if let Mode::Parts(p) = &mut self.mode {
            let seen = p.poll(g)?;
            match seen {
                parts::Seen::Live => return Ok(Step::At(RecordingState::Live, None)),
                parts::Seen::Finishing => return Ok(Step::At(RecordingState::Finishing, None)),
                parts::Seen::Unlocked | parts::Seen::Gone => {
                    let dir = p.dir().to_path_buf();
                    let new_out = identity(&self.out).is_some()
                        && (identity(&self.out) != self.out_before
                            || typhon_recorder::sink::parts_complete(&dir, &self.out));
                    if new_out {
                        // The finish (or a `recover`) made OUT: go on there, after what the
                        // parts gave.
                        let pos = g.positions().clone();
                        self.mode = Mode::File(Box::new(file::FileReader::open(&self.out, &pos)?));
                    } else if matches!(seen, parts::Seen::Gone) {
                        // A segment deleted while it was read: what its part files held open
                        // still have is read now, so that only what the follower never had is
                        // missing from the view.
                        let read = self.segment && p.holds_files();
                        if read {
                            p.drain(g)?;
                        }
                        return Ok(Step::Removed(dir, read));
                    } else {
                        step = Step::At(
                            RecordingState::Killed,
                            Some(format!(
                                "killed: the recorder is gone and its parts remain in {}; run `typhon-rec recover {}`",
                                dir.display(),
                                self.out.display()
                            )),
                        );
                    }
                }
            }
        }
        if let Mode::File(f) = &mut self.mode {
            f.poll(g)?;
        }
        Ok(step)
    }
}

/// Follows one recording (see the [module docs](self)).
///
/// Each slot's pages are read in order; a slot's position (its pages read, damaged or skipped)
/// carries over from `OUT.parts/` to the finished OUT, so a recording followed across its
/// finish shows every record once. A rotating recording is followed segment by segment
/// (see [`FollowBatch::skipped_segments`]).
pub struct Follower {
    path: PathBuf,
    out: PathBuf,
    one: Single,
    /// A rotating recording: which segment is read and what was passed.
    segments: Option<segments::Segments>,
    gather: Gather,
    state: RecordingState,
    message: Option<String>,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("path", &self.path)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(p)
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| (m.dev(), m.ino()))
}

impl Follower {
    /// OUT (a recording in progress: reads `OUT.parts/`, then OUT once finished) or a
    /// finished/recovered FILE. `OUT.parts` itself names the same recording as OUT. A rotating
    /// recording's OUT (its segments `OUT.000001`, … on disk, no OUT nor `OUT.parts`) is
    /// followed through its segments, the oldest kept first; `OUT.000003` follows that segment
    /// alone.
    ///
    /// ```
    /// let e = typhon_trace::follow::Follower::open("/nonexistent/run.dat").unwrap_err();
    /// assert!(e.to_string().contains("/nonexistent/run.dat"), "{e}");
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Follower, FollowError> {
        let path = path.as_ref().to_path_buf();
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        let out = match path.to_str().and_then(|s| s.strip_suffix(".parts")) {
            Some(o) if is_dir => PathBuf::from(o),
            _ => path.clone(),
        };
        let plain = is_dir
            || std::fs::symlink_metadata(typhon_recorder::sink::parts_dir(&out)).is_ok()
            || std::fs::symlink_metadata(&out).is_ok();
        let (one, segments) = match plain {
            true => (Single::open(&path, &out, is_dir, false)?, None),
            false => match segments::Segments::open(&out)? {
                Some((seg, one)) => (one, Some(seg)),
                // Not rotating either: the error names OUT and its parts.
                None => (Single::open(&path, &out, is_dir, false)?, None),
            },
        };
        let state = match one.mode {
            Mode::File(_) => RecordingState::Finished,
            Mode::Parts(_) => RecordingState::Live,
        };
        Ok(Follower {
            path,
            out,
            one,
            segments,
            gather: Gather::default(),
            state,
            message: None,
        })
    }

    /// Non-blocking: reads what is new since the last call (whole pages only), at most
    /// `max_records` records (a viewer that falls behind skips forward: see
    /// [`FollowBatch::skipped_pages`] and [`FollowBatch::skipped_records`]).
    ///
    /// When more than `max_records` records are new, the oldest pages (by their first record's
    /// time, across slots) are skipped whole, and counted, so the batch holds the newest ones.
    pub fn poll(&mut self, max_records: usize) -> Result<FollowBatch, FollowError> {
        self.gather.begin(max_records);
        let (state, message) = match &mut self.segments {
            None => match self.one.poll(&mut self.gather)? {
                Step::At(state, message) => (state, message),
                Step::Removed(dir, _) => {
                    return Err(FollowError::new(
                        &dir,
                        format!(
                            "the parts directory is gone and {} is not a new file: the recording was removed, not finished",
                            self.out.display()
                        ),
                    ))
                }
            },
            Some(seg) => seg.poll(&mut self.one, &mut self.gather)?,
        };
        self.state = state;
        self.message = message;
        let records = self.gather.take();
        Ok(FollowBatch {
            state: self.state,
            records,
            losses: self.gather.losses(),
            threads: self.gather.threads.clone(),
            skipped_pages: self.gather.skipped_pages,
            skipped_records: self.gather.skipped_records,
            skipped_segments: self.segments.as_ref().map_or(0, |s| s.skipped()),
            message: self.message.clone(),
        })
    }

    /// The segment of a rotating recording read now (`OUT.000003`); none for a recording that
    /// does not rotate (or a segment opened alone).
    pub fn segment(&self) -> Option<&Path> {
        self.segments.as_ref().map(|_| self.one.out.as_path())
    }

    /// The path given to [`Follower::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recording's OUT (the file the follower goes on in once the recording is finished).
    pub fn out(&self) -> &Path {
        &self.out
    }
}

//! Following a recording while it runs (SPEC §17): the reader behind `typhon-rec live`.
//!
//! A [`Follower`] opens `OUT` (a recording in progress: it reads `OUT.parts/`, then `OUT`
//! once the recording is finished) or a finished/recovered trace file. Each [`Follower::poll`]
//! reads what is new since the last call, whole pages only, each checked as `recover` checks
//! it, and says which [`RecordingState`] the recording is in.
//!
//! The follower never takes the recording's lock for writing and never writes into the parts
//! directory: it cannot make the recording lose a record. A follower that falls behind skips
//! forward and counts what it skipped ([`FollowBatch::skipped_pages`],
//! [`FollowBatch::skipped_records`]), apart from the recording's own losses.

use crate::tracedat::OwnedRecord;
use std::collections::BTreeMap;
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
    /// New records in time order per slot, resolved like
    /// [`crate::tracedat::TraceFile::stream_records`] does, as [`OwnedRecord`]s.
    pub records: Vec<OwnedRecord>,
    /// The recording's own losses so far (counter name -> value, non-zero and zero), read from
    /// the parts directory or the file's metadata.
    pub losses: BTreeMap<String, u64>,
    /// Thread names per slot as known so far (from ThreadInfo records / session metadata).
    pub threads: BTreeMap<u32, String>,
    /// Pages this follower skipped because it fell behind (not losses of the recording).
    pub skipped_pages: u64,
    /// Records this follower skipped because it fell behind (not losses of the recording).
    pub skipped_records: u64,
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

/// Follows one recording (see the [module docs](self)).
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
}

impl Follower {
    /// OUT (a recording in progress: reads `OUT.parts/`, then OUT once finished) or a
    /// finished/recovered FILE.
    pub fn open(path: impl AsRef<Path>) -> Result<Follower, FollowError> {
        let path = path.as_ref().to_path_buf();
        Err(FollowError::new(path, "following is not built yet"))
    }

    /// Non-blocking: reads what is new since the last call (whole pages only), at most
    /// `max_records` records (a viewer that falls behind skips forward: see
    /// [`FollowBatch::skipped_pages`] and [`FollowBatch::skipped_records`]).
    pub fn poll(&mut self, max_records: usize) -> Result<FollowBatch, FollowError> {
        let _ = max_records;
        Err(FollowError::new(&self.path, "following is not built yet"))
    }

    /// The path given to [`Follower::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }
}

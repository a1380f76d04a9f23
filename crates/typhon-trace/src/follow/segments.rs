//! A rotating recording (SPEC §16): `OUT.000001`, `OUT.000002`, … each a recording of its own
//! (its parts `OUT.NNNNNN.parts/` while written, then its file), the newest `keep` complete
//! ones kept. The follower reads one segment at a time, the oldest on disk first, as a
//! recording of its own (every segment restates its threads and definitions), and goes on to
//! the next once the one it reads is done: finished (its file read to the end), or killed (its
//! parts read: a kill during a segment's background finish leaves it and the next unfinished).
//!
//! The recorder makes segment N+1's parts before it finishes segment N, so once N is finished
//! the listing holds whatever comes after it. A segment the recording's `keep` deleted before
//! the follower got to it (a gap in the numbers; numbers start at 1), or while it was opening
//! it, is counted in [`super::FollowBatch::skipped_segments`]. One deleted while it was read
//! (its parts gone, its file gone) is read to its end from the part files held open: a
//! finish copies their pages and leaves them as they are, and a deleted file stays readable
//! while open.

use super::gather::Gather;
use super::{FollowError, RecordingState, Single, Step};
use std::path::{Path, PathBuf};
use typhon_recorder::sink::{parts_dir, segment_path, segments_on_disk};

pub(super) struct Segments {
    /// OUT: the segments' base.
    base: PathBuf,
    /// The segment read now.
    index: u64,
    /// Segments deleted before they were read (whole).
    skipped: u64,
    /// Parts directories of segments passed unfinished (killed), while they remain.
    unfinished: Vec<PathBuf>,
}

/// How many times a segment that changes form (parts, file) while it is opened is tried.
const OPEN_TRIES: usize = 3;

impl Segments {
    /// `out`'s segments, if it has any: the follower starts with the oldest on disk.
    pub(super) fn open(out: &Path) -> Result<Option<(Segments, Single)>, FollowError> {
        let mut seg = Segments {
            base: out.to_path_buf(),
            index: 0,
            skipped: 0,
            unfinished: Vec::new(),
        };
        if segments_on_disk(out)
            .map_err(|e| FollowError::io(out, e))?
            .is_empty()
        {
            return Ok(None);
        }
        match seg.next()? {
            Some(one) => Ok(Some((seg, one))),
            // All deleted in between: as if there were none.
            None => Ok(None),
        }
    }

    pub(super) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Opens the first segment on disk after the current one (counting those passed as
    /// skipped), or none if there is none (yet).
    fn next(&mut self) -> Result<Option<Single>, FollowError> {
        loop {
            let Some(n) = self.after(self.index)? else {
                return Ok(None);
            };
            self.skipped += n - self.index - 1;
            self.index = n;
            if let Some(one) = self.open_segment(n)? {
                return Ok(Some(one));
            }
            // Deleted while it was opened.
            self.skipped += 1;
        }
    }

    /// The number of the first segment on disk after `index`.
    fn after(&self, index: u64) -> Result<Option<u64>, FollowError> {
        let on_disk = segments_on_disk(&self.base).map_err(|e| FollowError::io(&self.base, e))?;
        Ok(on_disk.into_iter().map(|s| s.0).find(|&n| n > index))
    }

    /// Segment `n` as a recording; none if it is gone (deleted by `keep`).
    fn open_segment(&self, n: u64) -> Result<Option<Single>, FollowError> {
        let out = segment_path(&self.base, n);
        let dir = parts_dir(&out);
        let mut tries = 0;
        loop {
            let there =
                std::fs::symlink_metadata(&out).is_ok() || std::fs::symlink_metadata(&dir).is_ok();
            if !there {
                return Ok(None);
            }
            match Single::open(&out, &out, false, true) {
                Ok(one) => return Ok(Some(one)),
                // Its parts removed by its finish, or its file deleted, in between: look again.
                Err(_) if tries + 1 < OPEN_TRIES => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads what is new in the current segment and, while it is done and another follows,
    /// in the next ones; says the recording's state.
    pub(super) fn poll(
        &mut self,
        one: &mut Single,
        g: &mut Gather,
    ) -> Result<(RecordingState, Option<String>), FollowError> {
        loop {
            let step = one.poll(g)?;
            let (done, removed) = match &step {
                Step::At(RecordingState::Live | RecordingState::Finishing, _) => (false, false),
                Step::At(_, _) => (true, false),
                Step::Removed(..) => (true, true),
            };
            if done {
                let before = self.index;
                if let Some(next) = self.next()? {
                    match &step {
                        // Deleted while read: skipped unless its part files were read.
                        Step::Removed(_, read) => self.skipped += u64::from(!read),
                        Step::At(RecordingState::Killed, _) => self
                            .unfinished
                            .push(parts_dir(&segment_path(&self.base, before))),
                        Step::At(..) => {}
                    }
                    g.end_segment();
                    *one = next;
                    continue;
                }
                if removed {
                    return Err(FollowError::new(
                        parts_dir(&one.out),
                        format!(
                            "the parts directory is gone and {} is not a new file: the recording was removed, not finished",
                            one.out.display()
                        ),
                    ));
                }
            }
            self.unfinished.retain(|d| d.exists());
            let state = match step {
                // The current segment finishing is a rotation when the next one is there.
                Step::At(RecordingState::Finishing, _) if self.after(self.index)?.is_some() => {
                    RecordingState::Live
                }
                Step::At(RecordingState::Finished, _) if !self.unfinished.is_empty() => {
                    RecordingState::Killed
                }
                Step::At(s, _) => s,
                Step::Removed(..) => unreachable!("returned above"),
            };
            return Ok((state, self.message(state, one)));
        }
    }

    fn message(&self, state: RecordingState, one: &Single) -> Option<String> {
        let mut m = Vec::new();
        if state == RecordingState::Killed {
            let mut dirs: Vec<String> = self
                .unfinished
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            let cur = parts_dir(&one.out);
            if cur.exists() && !self.unfinished.contains(&cur) {
                dirs.push(cur.display().to_string());
            }
            m.push(format!(
                "killed: the recorder is gone and the parts of its segments remain in {}; run `typhon-rec recover {}`",
                dirs.join(", "),
                self.base.display()
            ));
        }
        if self.skipped > 0 {
            m.push(format!(
                "{} segment(s) of {} deleted by the recording's `keep` before the follower read them",
                self.skipped,
                self.base.display()
            ));
        }
        (!m.is_empty()).then(|| m.join("; "))
    }
}

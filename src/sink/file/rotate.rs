//! Rotating segments (SPEC §16): a run written as `OUT.000001`, `OUT.000002`, … each an
//! ordinary [`FileSink`] recording (its own `OUT.NNNNNN.parts/`, lock, counters, journaled
//! assembly), so each segment is a complete trace.dat readable alone and a kill leaves the
//! current one (and one whose finish was under way) for [`recover`](super::recover).
//!
//! The flusher cuts every slot's stream at a rotation (see [`Sink::rotate`]) and restates what
//! a reader of the new segment alone needs; this sink swaps in the next segment's `FileSink`
//! and finishes the old one on a background thread (`typhon-segment`), with the counters of
//! that segment only (the session's at the cut less those at the segment's start). Once a
//! segment is complete, the oldest complete ones past `keep` are deleted, each only if the file
//! is still the one its finish made (same device and inode), and what they held is counted in
//! [`Rotation`] (and so in `Stats::rotated_out_*`): every record the run wrote is in a kept
//! segment or in those counts.

use super::paths::output_path;
use super::FileSink;
use crate::flush::page::PageRecords;
use crate::sink::tracedat::Compression;
use crate::sink::{SessionSummary, Sink, SlotSummary, Unstored};
use std::collections::VecDeque;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Segment `n`'s path: `OUT.000001` for `n` = 1.
///
/// ```
/// let p = typhon_recorder::sink::segment_path("/tmp/run.dat".as_ref(), 12);
/// assert_eq!(p, std::path::Path::new("/tmp/run.dat.000012"));
/// ```
pub fn segment_path(out: &Path, n: u64) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(format!(".{n:06}"));
    PathBuf::from(s)
}

/// The segment number of `name` if it is `<base>.NNNNNN` or `<base>.NNNNNN.parts`.
fn segment_number(base: &str, name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix(base)?.strip_prefix('.')?;
    let (digits, parts) = match rest.strip_suffix(".parts") {
        Some(d) => (d, true),
        None => (rest, false),
    };
    (digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok().map(|n| (n, parts)))
        .flatten()
}

/// Every segment of the rotating recording `out` on disk, complete or not: (number, path,
/// whether it is a parts directory `OUT.NNNNNN.parts`), in order. A segment whose finish is
/// cleaning up shows as both. A reader following the run (SPEC §17) goes from one to the next.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("sd-doc-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("x.dat.000003.parts")).unwrap();
/// std::fs::write(dir.join("x.dat.000002"), b"").unwrap();
/// let s = typhon_recorder::sink::segments_on_disk(&dir.join("x.dat")).unwrap();
/// assert_eq!(s, vec![(2, dir.join("x.dat.000002"), false), (3, dir.join("x.dat.000003.parts"), true)]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn segments_on_disk(out: &Path) -> io::Result<Vec<(u64, PathBuf, bool)>> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let base = out.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: the file name is not UTF-8", out.display()),
        )
    })?;
    let mut v = Vec::new();
    for e in fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
    {
        let e = e?;
        if let Some((n, parts)) = e.file_name().to_str().and_then(|s| segment_number(base, s)) {
            v.push((n, e.path(), parts));
        }
    }
    v.sort();
    Ok(v)
}

/// The complete segments of the rotating recording `out` on disk, in order (those a kill left
/// unfinished, `OUT.NNNNNN.parts/`, are not among them: see [`recover_segments`]).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("sf-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("x.dat.000002"), b"").unwrap();
/// std::fs::write(dir.join("x.dat.7"), b"").unwrap();
/// let s = typhon_recorder::sink::segment_files(&dir.join("x.dat")).unwrap();
/// assert_eq!(s, vec![dir.join("x.dat.000002")]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn segment_files(out: &Path) -> io::Result<Vec<PathBuf>> {
    Ok(segments_on_disk(out)?
        .into_iter()
        .filter(|s| !s.2)
        .map(|s| s.1)
        .collect())
}

/// Recovers every segment of the rotating recording `out` that a kill left unfinished (the
/// current one, and one whose background finish was under way): each `OUT.NNNNNN.parts/`
/// becomes `OUT.NNNNNN`, as [`recover`](super::recover) does for one recording. Returns each
/// segment's path and outcome, in segment order (none: `out` has no unfinished segment).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("rs-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// assert!(typhon_recorder::sink::recover_segments(&dir.join("x.dat")).unwrap().is_empty());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn recover_segments(out: &Path) -> io::Result<Vec<(PathBuf, super::Recovered)>> {
    let mut v = Vec::new();
    for (n, _, parts) in segments_on_disk(out)? {
        if parts {
            let seg = segment_path(out, n);
            let r = super::recover(&seg)?;
            v.push((seg, r));
        }
    }
    Ok(v)
}

/// What a rotating recording deleted to keep the newest segments, counted (SPEC §16: nothing
/// leaves the run uncounted). Shared with the background finishes.
#[derive(Debug, Default)]
pub struct Rotation {
    /// Segments completed (kept or deleted since).
    pub finished: AtomicU64,
    /// Segments deleted because `keep` newer ones were complete.
    pub deleted: AtomicU64,
    /// Records (every slot's `written`, slot 0's included) in the deleted segments.
    pub deleted_records: AtomicU64,
    /// Missed counts the deleted segments carried.
    pub deleted_missed: AtomicU64,
}

/// A complete segment: its number, the file's identity, and what it holds.
struct Done {
    path: PathBuf,
    id: (u64, u64),
    records: u64,
    missed: u64,
}

/// State shared with the background finishes.
#[derive(Default)]
struct Shared {
    /// Complete segments, oldest first.
    done: VecDeque<Done>,
    /// A finish that failed, for the next `flush` to return (its pages stay for `recover`).
    error: Option<io::Error>,
}

/// Writes the run as segments of about `segment_bytes` of pages each, keeping the newest `keep`
/// complete ones (see the module). Made by [`RecorderBuilder::rotate`](crate::RecorderBuilder::rotate).
pub struct RotatingSink {
    out: PathBuf,
    page_size: usize,
    compression: Compression,
    chunk_pages: usize,
    segment_bytes: u64,
    keep: usize,
    /// The segment being written and its number.
    current: FileSink,
    index: u64,
    /// Page bytes handed to the current segment.
    bytes: u64,
    /// The session's counters when the current segment started.
    baseline: SessionSummary,
    /// The current segment's start (its anchors and version).
    start: SessionSummary,
    /// Per slot: the thread the current segment's pages name first (its restated ThreadInfo).
    names: Vec<Option<(String, i32)>>,
    shared: Arc<Mutex<Shared>>,
    rotation: Arc<Rotation>,
    finishing: Option<JoinHandle<()>>,
}

impl RotatingSink {
    /// Starts segment 1 of `out` (checked as [`FileSink::create`] checks an output). Refuses a
    /// run whose segments would mix with an earlier run's: any `OUT.NNNNNN` or
    /// `OUT.NNNNNN.parts` already there is named in the error.
    pub fn create(
        out: impl AsRef<Path>,
        page_size: usize,
        compression: Compression,
        chunk_pages: usize,
        segment_bytes: u64,
        keep: usize,
    ) -> io::Result<Self> {
        if segment_bytes < page_size as u64 || keep == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rotate({segment_bytes}, {keep}): a segment holds at least one page ({page_size} bytes) and at least one segment is kept"),
            ));
        }
        let out = output_path(out.as_ref())?;
        if let Some((_, p, _)) = segments_on_disk(&out)?.into_iter().next() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists (a segment of an earlier rotating recording to {}): move it away, or run `typhon-rec recover {}` if it is unfinished",
                    p.display(),
                    out.display(),
                    out.display()
                ),
            ));
        }
        let current =
            FileSink::create_with(segment_path(&out, 1), page_size, compression, chunk_pages)?;
        Ok(Self {
            out,
            page_size,
            compression,
            chunk_pages,
            segment_bytes,
            keep,
            current,
            index: 1,
            bytes: 0,
            baseline: SessionSummary::default(),
            start: SessionSummary::default(),
            names: vec![None; 256],
            shared: Arc::default(),
            rotation: Arc::default(),
            finishing: None,
        })
    }

    /// The counts of the segments finished and deleted, shared (see [`Rotation`]).
    pub fn rotation(&self) -> Arc<Rotation> {
        self.rotation.clone()
    }

    /// The current segment's own counters: the session's `now` less those at its start; each
    /// slot named by the thread its pages restate first.
    fn segment_summary(&self, now: &SessionSummary) -> SessionSummary {
        let base = |slot: u8| self.baseline.slots.iter().find(|b| b.slot == slot);
        let slots = now
            .slots
            .iter()
            .filter_map(|s| {
                let d = match base(s.slot) {
                    None => s.clone(),
                    Some(b) => SlotSummary {
                        attempted: s.attempted - b.attempted.min(s.attempted),
                        written: s.written - b.written.min(s.written),
                        missed: s.missed - b.missed.min(s.missed),
                        filtered: s.filtered - b.filtered.min(s.filtered),
                        refused: s.refused - b.refused.min(s.refused),
                        sink_lost: s.sink_lost - b.sink_lost.min(s.sink_lost),
                        clamped: s.clamped - b.clamped.min(s.clamped),
                        unclosed: s.unclosed - b.unclosed.min(s.unclosed),
                        ..s.clone()
                    },
                };
                let active = d.attempted + d.filtered + d.refused + d.clamped + d.unclosed > 0;
                active.then(|| match &self.names[s.slot as usize] {
                    Some((name, tid)) => SlotSummary {
                        name: name.clone(),
                        thread_ids: vec![*tid],
                        last_thread_id: d.last_thread_id,
                        threads: d.threads.max(1),
                        ..d
                    },
                    None => d,
                })
            })
            .collect();
        SessionSummary {
            page_size: now.page_size,
            wall_anchor_ns: self.start.wall_anchor_ns,
            monotonic_anchor_ns: self.start.monotonic_anchor_ns,
            end_ns: now.end_ns,
            slots,
            no_slot: now.no_slot - self.baseline.no_slot.min(now.no_slot),
            filtered_no_slot: now.filtered_no_slot
                - self.baseline.filtered_no_slot.min(now.filtered_no_slot),
            version: self.start.version.clone(),
            pages_lost: now.pages_lost - self.baseline.pages_lost.min(now.pages_lost),
            sink_errors: now.sink_errors - self.baseline.sink_errors.min(now.sink_errors),
            first_sink_error: now.first_sink_error.clone(),
        }
    }

    /// Waits for the background finish under way, if any.
    fn join_finishing(&mut self) {
        if let Some(h) = self.finishing.take() {
            let _ = h.join();
        }
    }

    fn take_error(&self) -> io::Result<()> {
        match self
            .shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .error
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Finishes one segment, notes it complete, and deletes the oldest complete ones past `keep`.
fn finish_segment(
    sink: &mut FileSink,
    summary: SessionSummary,
    keep: usize,
    shared: &Mutex<Shared>,
    rotation: &Rotation,
) {
    let path = sink.out.clone();
    let r = sink.finish(&summary).and_then(|()| {
        fs::symlink_metadata(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    });
    let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
    let m = match r {
        Ok(m) => m,
        Err(e) => {
            sh.error.get_or_insert(e);
            return;
        }
    };
    // Relaxed: statistics, read by `stats()`.
    rotation.finished.fetch_add(1, Ordering::Relaxed);
    sh.done.push_back(Done {
        path,
        id: (m.dev(), m.ino()),
        records: summary.slots.iter().map(|s| s.written).sum(),
        missed: summary.slots.iter().map(|s| s.missed).sum(),
    });
    while sh.done.len() > keep {
        let d = sh.done.pop_front().expect("longer than keep");
        // Only the file this recording made: one put in its place is left alone (SPEC §9), and
        // its records are then still counted as deleted, since the run no longer holds them.
        let ours = fs::symlink_metadata(&d.path).is_ok_and(|m| (m.dev(), m.ino()) == d.id);
        if ours {
            if let Err(e) = fs::remove_file(&d.path) {
                sh.error.get_or_insert(io::Error::new(
                    e.kind(),
                    format!("deleting {}: {e}", d.path.display()),
                ));
            }
        }
        rotation.deleted.fetch_add(1, Ordering::Relaxed);
        rotation
            .deleted_records
            .fetch_add(d.records, Ordering::Relaxed);
        rotation
            .deleted_missed
            .fetch_add(d.missed, Ordering::Relaxed);
    }
}

impl Sink for RotatingSink {
    fn begin(&mut self, start: &SessionSummary) -> io::Result<()> {
        self.start = start.clone();
        self.current.begin(start)
    }

    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()> {
        let name = &mut self.names[slot as usize];
        if name.is_none() {
            // The slot's first page in this segment opens with its restated ThreadInfo (or, in
            // the first segment, the thread's own).
            if let Ok(recs) = PageRecords::new(page) {
                for (_, r) in recs.flatten() {
                    if let Some((tid, n, _)) = crate::codec::records::thread_info(r) {
                        *name = Some((n.to_owned(), tid));
                        break;
                    }
                }
            }
        }
        self.bytes += page.len() as u64;
        self.current.write_page(slot, page)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.current.flush();
        r.and(self.take_error())
    }

    fn counters(&mut self, now: &SessionSummary) -> io::Result<()> {
        let seg = self.segment_summary(now);
        self.current.counters(&seg)
    }

    fn rotation_due(&self) -> bool {
        self.bytes >= self.segment_bytes
    }

    fn rotate(&mut self, now: &SessionSummary) -> io::Result<()> {
        let next = FileSink::create_with(
            segment_path(&self.out, self.index + 1),
            self.page_size,
            self.compression,
            self.chunk_pages,
        )
        .inspect_err(|_| {
            // The current segment goes on; the next try comes a segment's worth later, not at
            // every cycle (each failure is a counted sink error).
            self.bytes = 0;
        })?;
        let mut start = self.start.clone();
        start.wall_anchor_ns = now.wall_anchor_ns;
        start.monotonic_anchor_ns = now.monotonic_anchor_ns;
        let mut next = next;
        next.begin(&start)?;
        let summary = self.segment_summary(now);
        let old = std::mem::replace(&mut self.current, next);
        self.index += 1;
        self.bytes = 0;
        self.baseline = now.clone();
        self.start = start;
        self.names = vec![None; 256];
        // One finish at a time: the previous one has had a whole segment's time.
        self.join_finishing();
        let (keep, shared, rotation) = (self.keep, self.shared.clone(), self.rotation.clone());
        let spawned = std::thread::Builder::new()
            .name("typhon-segment".into())
            .spawn(move || {
                let mut old = old;
                finish_segment(&mut old, summary, keep, &shared, &rotation)
            });
        match spawned {
            Ok(h) => self.finishing = Some(h),
            // No thread: the segment's pages stay in its parts directory, for `recover`.
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "starting the finish of {}: {e}; its pages are kept for `typhon-rec recover`",
                        segment_path(&self.out, self.index - 1).display()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn take_unstored(&mut self) -> Vec<Unstored> {
        self.current.take_unstored()
    }

    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()> {
        self.join_finishing();
        let seg = self.segment_summary(summary);
        let (keep, shared, rotation) = (self.keep, self.shared.clone(), self.rotation.clone());
        finish_segment(&mut self.current, seg, keep, &shared, &rotation);
        self.take_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_are_recognised_only_with_six_digits() {
        assert_eq!(segment_number("a.dat", "a.dat.000003"), Some((3, false)));
        assert_eq!(
            segment_number("a.dat", "a.dat.000003.parts"),
            Some((3, true))
        );
        assert_eq!(segment_number("a.dat", "a.dat.1"), None);
        assert_eq!(segment_number("a.dat", "a.dat.parts"), None);
        assert_eq!(segment_number("a.dat", "b.dat.000001"), None);
    }
}

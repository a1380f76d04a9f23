//! Writing a snapshot: the cut's pages and chunks of every slot, trimmed to `(W, T1]`
//! (`parts`), into `<program>-<UTC time>-<n>.dat`, written as `.<name>.tmp` and linked to its
//! name only when complete.

use super::parts::{self, Parts, SlotCut};
use super::request::Snapshot;
use crate::tracedat::{
    write_tracedat_v7, write_tracedat_with, Compression, FileMeta, SlotMeta, SlotPages,
};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Everything the snapshot thread needs, taken on the flusher thread at the cut.
pub(crate) struct Job {
    pub(crate) dir: PathBuf,
    pub(crate) program: String,
    pub(crate) n: u64,
    pub(crate) compression: Compression,
    pub(crate) page_size: usize,
    pub(crate) from_ns: u64,
    pub(crate) to_ns: u64,
    pub(crate) meta: serde_json::Value,
    pub(crate) wall_anchor_ns: u64,
    pub(crate) mono_anchor_ns: u64,
    pub(crate) evicted_records: u64,
    pub(crate) reason: String,
    pub(crate) slots: Vec<SlotCut>,
}

/// Writes the snapshot of `job`; the path of the complete file.
pub(crate) fn write(job: Job) -> io::Result<Snapshot> {
    let (w, t1) = (job.from_ns, job.to_ns);
    let mut meta = FileMeta::new(job.page_size as u32);
    meta.wall_anchor_ns = job.wall_anchor_ns as i64;
    meta.mono_anchor_ns = job.mono_anchor_ns as i64;
    let mut built = Vec::new();
    let (mut records, mut missed, mut open, mut restated) = (0, 0, 0, 0);
    let mut per_slot = Vec::new();
    for c in job.slots {
        let (slot, owner) = (c.slot, c.owner.clone());
        let level = match job.compression {
            Compression::Zstd { level } => Some(level),
            Compression::None => None,
        };
        let b = parts::build(c, job.page_size, w, t1, level)?;
        if b.written == 0 && b.missed == 0 {
            continue;
        }
        meta.slots.push(SlotMeta {
            slot,
            name: owner.as_ref().map(|o| o.name.clone()).unwrap_or_default(),
            thread_id: owner.as_ref().map(|o| i64::from(o.tid)),
            attempted: b.written + b.missed,
            written: b.written,
            missed: b.missed,
        });
        per_slot.push(serde_json::json!({
            "slot": slot, "open_at_cut": b.open, "restated": b.restated,
            "thread_ids": owner.as_ref().map(|o| vec![o.tid]).unwrap_or_default(),
            "threads": u64::from(owner.is_some()),
        }));
        records += b.written;
        missed += b.missed;
        open += b.open;
        restated += b.restated;
        built.push((slot, b));
    }
    let mut session = job.meta;
    session["end_ns"] = t1.into();
    session["slots"] = per_slot.into();
    session["window"]["open_at_cut"] = open.into();
    meta.session = session;
    let mut slot_pages: Vec<SlotPages<'_>> = built
        .iter_mut()
        .map(|(slot, b)| {
            let parts = std::mem::replace(&mut b.parts, Parts::empty());
            match b.chunks {
                Some(n) => SlotPages::chunked(*slot, b.len, n, parts),
                None => SlotPages::new(*slot, b.len, parts),
            }
        })
        .collect();
    let stamp = utc_stamp(std::time::SystemTime::now());
    let base = format!("{}-{}-{}", job.program, stamp, job.n);
    let tmp = job.dir.join(format!(".{base}.dat.tmp"));
    let file = create_new(&tmp)?;
    let written = (|| {
        if job.compression.is_compressed() {
            let mut out = io::BufWriter::with_capacity(1 << 20, &file);
            write_tracedat_v7(&mut out, &meta, job.compression, 0, &mut slot_pages)?;
            out.flush()?;
        } else {
            // Unbuffered: the writer's copy buffer is filled from the held pages and goes to the
            // file as it is (a second buffer would copy every byte once more). Each slot's
            // bytes are handed to the disk as soon as they are written, so the sync below
            // waits for the last slot's only, not for the whole file's.
            write_tracedat_with(&file, &meta, &mut slot_pages, |f, _, off, len| {
                start_writeback(f, off, len);
                Ok(())
            })?;
        }
        file.sync_all()
    })();
    drop(slot_pages);
    let path = written.and_then(|()| publish(&tmp, &job.dir, &base));
    if path.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let path = path.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    Ok(Snapshot {
        path,
        from_ns: w,
        to_ns: t1,
        records,
        missed,
        open_spans: open,
        restated,
        evicted_records: job.evicted_records,
        reason: job.reason,
    })
}

/// Starts the disk's write of `len` bytes at `off` of `f` without waiting for it (Linux's
/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`); elsewhere nothing, the final sync does it all.
fn start_writeback(f: &mut &std::fs::File, off: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: the fd is an open file for the duration of the call; the call only starts
        // write-out of that file's dirty pages (an error, such as a filesystem without it,
        // leaves everything to the sync that follows).
        unsafe {
            libc::sync_file_range(
                f.as_raw_fd(),
                off as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (f, off, len);
}

/// A new file, mode 0600 (names and fields may be secrets), never through a symlink.
fn create_new(path: &Path) -> io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    o.open(path)
}

/// Gives the complete temporary file its name: a hard link (which never replaces a file of
/// that name: a name taken, by another recording in the same millisecond, gets a suffix), then
/// the temporary name goes; the directory is synced so the name survives a crash.
fn publish(tmp: &Path, dir: &Path, base: &str) -> io::Result<PathBuf> {
    for k in 0..100u32 {
        let name = if k == 0 {
            format!("{base}.dat")
        } else {
            format!("{base}.{k}.dat")
        };
        let path = dir.join(name);
        match std::fs::hard_link(tmp, &path) {
            Ok(()) => {
                std::fs::remove_file(tmp)?;
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free name for {base} in {}", dir.display()),
    ))
}

/// `YYYYMMDDTHHMMSS.mmmZ` for a time (UTC).
pub(crate) fn utc_stamp(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_are_civil_time() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_764_635_700_123);
        assert_eq!(utc_stamp(t), "20251202T003500.123Z");
        assert_eq!(utc_stamp(std::time::UNIX_EPOCH), "19700101T000000.000Z");
    }
}
